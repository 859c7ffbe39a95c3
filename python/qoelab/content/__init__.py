"""Content pipeline: real encodes, DASH packaging, per-segment VMAF/SSIM/PSNR, frame tables, the corpus.

Modules: :mod:`.pipeline` (``prepare``), :mod:`.sources` (generated sources), :mod:`.ladder`,
:mod:`.measure`, :mod:`.frames`, :mod:`.mp4`, :mod:`.mpd`, :mod:`.formats` (Sabre/Minerva),
:mod:`.corpus` (``load_video``, ``list_videos``, ``find_video``, regeneration), :mod:`.cli`.
"""
