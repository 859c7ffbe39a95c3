//! Build and run errors of the network configuration.

/// A build or run error with the config path it concerns.
#[derive(Clone, Debug, PartialEq)]
pub struct SimError {
    /// Where in the normalized config (e.g. "links[2].aqm_params.target").
    pub path: String,
    pub msg: String,
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.msg)
    }
}

pub fn serr(path: impl Into<String>, msg: impl Into<String>) -> SimError {
    SimError { path: path.into(), msg: msg.into() }
}
