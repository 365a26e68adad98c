"""``uet sweep``: grids of ``uet sim`` / ``uet compare`` runs in parallel, on a local pool or a Dask
cluster, with one table of results (issue 30). ``spec`` reads the TOML and plans the runs,
``execute`` runs one, ``pool`` and ``cluster`` run many, ``results`` keeps the journal and writes
the table, ``plots`` draws it, ``command`` is the subcommand."""
