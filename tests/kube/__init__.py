"""Tests of pumice.kube, through its real client against pumice.sim on loopback."""
