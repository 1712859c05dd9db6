"""Analyses over the ranks of a run (and of two runs): pure functions of lists of
:class:`~tb_compare_plugin.model.rank_summary.RankSummary`.

``summarise.summarise_worker`` makes one rank's summary from its files (the one per-rank function
that runs in a process pool or as a Dask task); ``cluster.analyse_cluster`` combines the per-rank
table (:mod:`.per_rank`), slow ranks (:mod:`.slow_rank`), slow links (:mod:`.slow_link`),
parallel-strategy hints (:mod:`.strategy`) and cluster against cluster (:mod:`.cluster_diff`)
into one :class:`~.cluster.ClusterResult`.
"""
