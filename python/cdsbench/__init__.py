"""cdsbench: the experiment runner, results database, plots, Markdown pages and HTML report of
the cdsbench harness. See README.md ("Experiments") and ``cdsbench.experiment`` for the
experiment format, ``cdsbench.markdown`` for the pages."""

__version__ = "0.1.0"
