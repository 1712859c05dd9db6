"""The parts of samples/make_samples.py, one per concern: ``common`` (the job's constants),
``program`` (what runs), ``timeline`` (when it runs), ``figures`` (the ground truth), one writer
per format (``kineto``, ``ascend_text``, with ``formatting`` shared by both) and ``expected``
(building the runs and expected.json).  A new sample format is one more writer module."""
