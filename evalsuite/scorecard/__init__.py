"""`evalsuite scorecard MAP`: a feature map scored beside the baselines on what a fixed state loses.

The pipeline: ``measure`` trains and measures one map (the probes, MQAR where the state binds, the
key interference of its trained models, the sharpness of its weights, its cost); ``card`` holds
the figures (one typed object, per seed), compares them with the comparison rule of the protocol
and loads the shipped baselines (``baselines.json``, made by ``python -m
evalsuite.scorecard.baselines``); ``evalsuite.reports.scorecard`` renders the page.
"""
