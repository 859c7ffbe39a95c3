//! *Interface 2*: always interface 2 (public name `only1-2`); the same rule as
//! [`super::if1`] on the second interface.

use super::if1::Only;
use super::PolicyEntry;

pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "if2",
    paper: "Interface 2",
    public: "only1-2",
    doc: "always interface 2: new connection vs queueing on an existing one, by predicted finish",
    randomized: false,
    min_ifaces: 2,
    build: |_, _| Box::new(Only(1)),
};
