"""The suite kinds: what each holds, its parameters and how its expected values are computed."""
