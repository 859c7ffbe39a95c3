//! Video, QoE and fairness metrics (pure functions over logs).
