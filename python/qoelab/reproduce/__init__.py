"""Reproductions of published experiments: ``qoelab reproduce <name>``.

Each reproduction module builds its experiment grid as scenario dicts, runs them with
:func:`qoelab.run` (in parallel, with deterministic seeds), extracts the paper's metrics, checks the
paper's claims against our numbers and writes an HTML report. The CLI group lives in
:mod:`qoelab.reproduce.cli`.

* ``livi``: Livi, Sassatelli, Urvoy-Keller, "HTTP Adaptive Streaming and Access Router Management:
  the Users' and Network's Perspectives" -- the HAS-over-AQM testbed (BBA2, BBA3, Classic1,
  Classic2 over droptail, ARED and CoDel). See :mod:`qoelab.reproduce.livi` and
  docs/reproductions/livi.md.
* ``sprint``: Arye, Sen, Freedman, "Poor Video Streaming Performance Explained (and Fixed)" --
  Sprint / Sprint-x vs sequential DASH against bulk flows (claims S1-S20). See
  :mod:`qoelab.reproduce.sprint` and docs/reproductions/sprint.md.
* ``chunklets``: Kua & Armitage, "Optimising DASH over AQM-enabled Gateways Using Intra-chunk
  Parallel Retrieval (Chunklets)" -- N parallel byte-range requests over FIFO, PIE and FQ-CoDel.
  See :mod:`qoelab.reproduce.chunklets` and docs/reproductions/chunklets.md.
* ``minerva``: Nathan et al., "End-to-End Transport for Video QoE Fairness" -- Minerva vs Cubic and
  BBR, dynamic arrivals, cross traffic, rate bounds, two providers (claims M1-M22). See
  :mod:`qoelab.reproduce.minerva` and docs/reproductions/minerva.md.
* ``voxel``: Palmer, dissertation ch. 4-6 (VOXEL, CoNEXT'21) -- frame-level partial segments over
  QUIC* with ABR* vs BOLA and BETA-like on cellular traces, on MODELLED stand-in videos (claims
  V1-V43). See :mod:`qoelab.reproduce.voxel` and docs/reproductions/voxel.md.
"""

REPRODUCTIONS = {
    "livi": "qoelab.reproduce.livi",
    "sprint": "qoelab.reproduce.sprint",
    "chunklets": "qoelab.reproduce.chunklets",
    "minerva": "qoelab.reproduce.minerva",
    "voxel": "qoelab.reproduce.voxel",
}
