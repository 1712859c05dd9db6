"""Input formats: one module per format, each defining a descriptor (recognise, peek, load,
capabilities); ``registry`` lists them.  See ``base`` for what a descriptor is."""
