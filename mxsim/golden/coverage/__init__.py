"""The corner classes: the catalogue behind every vector's ``flags`` and each suite's coverage."""
