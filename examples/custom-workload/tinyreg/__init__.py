"""An example tebench workload: a small MLP learns a fixed random function."""
