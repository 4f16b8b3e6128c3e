"""Tests of the simulated Kubernetes API server (pumice.sim)."""
