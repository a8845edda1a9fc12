"""A device's results against a suite: checking, explaining mismatches, decomposing vectors."""
