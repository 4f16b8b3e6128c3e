"""The daemon: informers, cache, the session loop, binder, health and metrics, leader election,
config reload, signals and systemd notification (``pumice.daemon.notify``)."""
