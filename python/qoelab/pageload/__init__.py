"""Flow-level page loads (Socket Intents, Palmer 2022 ch. 3): workloads (HAR import, handcrafted
pages, the synthetic generator), unit conversion, and the ``qoelab pageload`` command. The model
itself is in the Rust core (docs/models/pageload.md); ``qoelab._core.pageload_run`` /
``pageload_batch`` run it."""
