"""cdsbench: the experiment runner, results database, plots and HTML report of the cdsbench
harness. See README.md ("Experiments") and ``cdsbench.experiment`` for the experiment format."""

__version__ = "0.1.0"
