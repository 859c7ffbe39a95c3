//! Model parameters: typed descriptors (name, unit, published default, doc) and values.
//!
//! Every registered model (AQM, congestion controller, ...) declares its parameters as a
//! `&'static [ParamSpec]`. The same table drives scenario validation (the Python front converts
//! unit strings such as "5ms" to the canonical integers below), `qoelab list`, and the docs.
//!
//! Canonical units of values: durations in ns, rates in bit/s, sizes in bytes, counts in packets.

use serde_json::{Map, Value};
use std::fmt;

/// The unit (and so the accepted notation) of a parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    /// Duration: "5ms", "1.5s" -> ns.
    Duration,
    /// Rate: "10Mbps" -> bit/s.
    Rate,
    /// Size: "256KB", "1500B" -> bytes.
    Bytes,
    /// A count of packets: "1000" or "1000pkts".
    Packets,
    /// A real number (probability, gain, weight...).
    Float,
    /// An integer.
    Int,
    Bool,
    /// One of a fixed set of names.
    Choice(&'static [&'static str]),
}

impl Unit {
    pub fn name(&self) -> &'static str {
        match self {
            Unit::Duration => "duration",
            Unit::Rate => "rate",
            Unit::Bytes => "bytes",
            Unit::Packets => "packets",
            Unit::Float => "float",
            Unit::Int => "int",
            Unit::Bool => "bool",
            Unit::Choice(_) => "choice",
        }
    }
}

/// A parameter's default.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Default {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(&'static str),
    /// Taken from the context (e.g. the link's buffer size); the text says from what.
    Context(&'static str),
    /// Unset means "off"/"none" (e.g. an optional limit).
    None,
}

/// Descriptor of one parameter.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub unit: Unit,
    pub default: Default,
    /// One line: meaning, and where the default comes from (RFC section, paper).
    pub doc: &'static str,
}

/// A parameter error, naming the parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamError {
    pub param: String,
    pub msg: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.param, self.msg)
    }
}
impl std::error::Error for ParamError {}

pub fn perr(param: &str, msg: impl Into<String>) -> ParamError {
    ParamError { param: param.to_string(), msg: msg.into() }
}

/// Parameter values (canonical units), as parsed from a scenario section.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params(pub Map<String, Value>);

impl Params {
    pub fn new() -> Params {
        Params(Map::new())
    }
    pub fn from_value(v: &Value) -> Result<Params, ParamError> {
        match v {
            Value::Object(m) => Ok(Params(m.clone())),
            Value::Null => Ok(Params::new()),
            _ => Err(perr("", "expected a table of parameters")),
        }
    }
    /// Builder: set a value.
    pub fn with(mut self, k: &str, v: impl Into<Value>) -> Params {
        self.0.insert(k.to_string(), v.into());
        self
    }
    /// Reject names not in `specs`.
    pub fn check_known(&self, specs: &[ParamSpec]) -> Result<(), ParamError> {
        for k in self.0.keys() {
            if !specs.iter().any(|s| s.name == k) {
                let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
                return Err(perr(k, format!("unknown parameter; expected one of: {}", names.join(", "))));
            }
        }
        Ok(())
    }
    fn spec<'a>(specs: &'a [ParamSpec], name: &str) -> &'a ParamSpec {
        specs.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("model bug: parameter {name} not declared"))
    }
    /// Integer value (durations ns, rates bit/s, bytes, packets, ints); default from the spec.
    pub fn u64(&self, specs: &[ParamSpec], name: &str) -> Result<Option<u64>, ParamError> {
        match self.0.get(name) {
            Some(Value::Number(n)) => {
                if let Some(u) = n.as_u64() {
                    Ok(Some(u))
                } else if let Some(f) = n.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0) {
                    Ok(Some(f as u64))
                } else {
                    Err(perr(name, format!("expected a non-negative integer, found {n}")))
                }
            }
            Some(v) => Err(perr(name, format!("expected a number, found {v}"))),
            None => match Self::spec(specs, name).default {
                Default::Int(i) if i >= 0 => Ok(Some(i as u64)),
                Default::None | Default::Context(_) => Ok(None),
                d => panic!("model bug: default of {name} is {d:?}, not an unsigned int"),
            },
        }
    }
    /// Like [`Params::u64`] but the parameter must resolve to a value.
    pub fn req_u64(&self, specs: &[ParamSpec], name: &str) -> Result<u64, ParamError> {
        self.u64(specs, name)?.ok_or_else(|| perr(name, "required"))
    }
    pub fn f64(&self, specs: &[ParamSpec], name: &str) -> Result<f64, ParamError> {
        match self.0.get(name) {
            Some(Value::Number(n)) => match n.as_f64() {
                // Every real parameter (gains, probabilities, ratios, weights) is >= 0.
                Some(f) if f.is_finite() && f >= 0.0 => Ok(f),
                _ => Err(perr(name, format!("expected a finite number >= 0, found {n}"))),
            },
            Some(v) => Err(perr(name, format!("expected a number, found {v}"))),
            None => match Self::spec(specs, name).default {
                Default::Float(f) => Ok(f),
                Default::Int(i) => Ok(i as f64),
                d => panic!("model bug: default of {name} is {d:?}, not a number"),
            },
        }
    }
    pub fn bool(&self, specs: &[ParamSpec], name: &str) -> Result<bool, ParamError> {
        match self.0.get(name) {
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(perr(name, format!("expected true or false, found {v}"))),
            None => match Self::spec(specs, name).default {
                Default::Bool(b) => Ok(b),
                d => panic!("model bug: default of {name} is {d:?}, not a bool"),
            },
        }
    }
    pub fn choice(&self, specs: &[ParamSpec], name: &str) -> Result<&'static str, ParamError> {
        let spec = Self::spec(specs, name);
        let Unit::Choice(opts) = spec.unit else { panic!("model bug: {name} is not a choice") };
        let s: String = match self.0.get(name) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => return Err(perr(name, format!("expected one of {}, found {v}", opts.join("|")))),
            None => match spec.default {
                Default::Str(s) => s.to_string(),
                d => panic!("model bug: default of {name} is {d:?}, not a string"),
            },
        };
        opts.iter()
            .find(|o| **o == s)
            .copied()
            .ok_or_else(|| perr(name, format!("expected one of {}, found \"{s}\"", opts.join("|"))))
    }
}

/// Describe a parameter table as JSON (for `qoelab list` and the Python validator).
pub fn specs_json(specs: &[ParamSpec]) -> Value {
    Value::Array(
        specs
            .iter()
            .map(|s| {
                let mut m = Map::new();
                m.insert("name".into(), s.name.into());
                m.insert("unit".into(), s.unit.name().into());
                if let Unit::Choice(opts) = s.unit {
                    m.insert("choices".into(), opts.to_vec().into());
                }
                let d: Value = match s.default {
                    Default::Int(i) => i.into(),
                    Default::Float(f) => f.into(),
                    Default::Bool(b) => b.into(),
                    Default::Str(x) => x.into(),
                    Default::Context(c) => format!("<{c}>").into(),
                    Default::None => Value::Null,
                };
                m.insert("default".into(), d);
                m.insert("doc".into(), s.doc.into());
                Value::Object(m)
            })
            .collect(),
    )
}
