"""What the CLI and the plugin share, between their front doors and the engines.

* :mod:`.loading` — parsing with progress: the profile store (a bounded LRU of parse jobs over
  the parser processes and the disk cache), :func:`~.loading.load_profile`,
  :func:`~.loading.load_pair`, :class:`~.loading.JobCache` (the one job mechanism);
* :mod:`.parsepool` — the parser processes (a fork server; one job per child; progress and the
  hand-off through a scratch folder);
* :mod:`.compare` — :class:`~.compare.CompareService`: comparisons, the overview's disk cache,
  table pages, other answers and workbooks under one key (:func:`~.compare.pair_key`), each
  computed off the caller's thread with a bounded wait; the CLI calls its plain functions;
* :mod:`.errors` — Pending (202), NotParsed (409), Unusable (422), BadParameter (400: a parameter
  naming nothing that exists, with the valid choices);
* :mod:`.params` — what a request's parameters may name (the steps a parsed side holds), checked
  before any job starts;
* :mod:`.cluster` — a run's cluster analysis (:func:`~.cluster.cluster_json`): discovery, every
  rank's summary on local cores or Dask, the summary and result caches, ``analyse_cluster``;
* :mod:`.dask_exec` — the per-rank work as Dask tasks (``--dask-scheduler``, the plugin flag,
  ``TB_COMPARE_DASK_SCHEDULER``); ``distributed`` imported only when asked for.
"""
