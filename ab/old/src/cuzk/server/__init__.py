"""The proving daemon: cuzk.v1 gRPC service (``service``, ``convert``), durable job journal
(``journal``), bearer-token/TLS security (``auth``), HTTP status and metrics (``http``,
``metrics``), TOML configuration (``config``), the composed :class:`~cuzk.server.daemon.Daemon`
and a Python client (``client``). Submodules are imported on use, so reading a config does not
pull in gRPC."""
