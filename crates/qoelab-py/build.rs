// The source fingerprint QOELAB_SOURCE_ID, computed as for the emulator binary (one file for both).
include!("../qoelab-net/build.rs");
