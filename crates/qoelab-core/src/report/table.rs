//! Columnar output tables. Recording is opt-in per table; nothing is recorded per packet unless
//! the packet log is enabled for a link.

/// One column of a table.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    I64(Vec<i64>),
    F64(Vec<f64>),
    Str(Vec<String>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::I64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A named table of equal-length columns.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<(String, Column)>,
}

impl Table {
    pub fn new(name: &str, cols: &[(&str, char)]) -> Table {
        Table {
            name: name.to_string(),
            columns: cols
                .iter()
                .map(|(n, t)| {
                    let c = match t {
                        'i' => Column::I64(Vec::new()),
                        'f' => Column::F64(Vec::new()),
                        's' => Column::Str(Vec::new()),
                        _ => panic!("column type {t}"),
                    };
                    (n.to_string(), c)
                })
                .collect(),
        }
    }
    pub fn rows(&self) -> usize {
        self.columns.first().map(|c| c.1.len()).unwrap_or(0)
    }
    /// Bytes of the rows recorded, estimated in O(columns): 8 per number, a `String` and 16 bytes
    /// of text per string (the tables' strings are names of a few characters). Resident memory
    /// follows this rather than the vectors' capacity (a grown vector's unused tail is untouched).
    pub fn data_bytes(&self) -> usize {
        self.columns
            .iter()
            .map(|(_, c)| match c {
                Column::I64(v) => v.len() * 8,
                Column::F64(v) => v.len() * 8,
                Column::Str(v) => v.len() * (std::mem::size_of::<String>() + 16),
            })
            .sum()
    }
    #[inline]
    pub fn i(&mut self, col: usize, v: i64) {
        match &mut self.columns[col].1 {
            Column::I64(x) => x.push(v),
            _ => panic!("column {col} of {} is not i64", self.name),
        }
    }
    #[inline]
    pub fn f(&mut self, col: usize, v: f64) {
        match &mut self.columns[col].1 {
            Column::F64(x) => x.push(v),
            _ => panic!("column {col} of {} is not f64", self.name),
        }
    }
    #[inline]
    pub fn s(&mut self, col: usize, v: &str) {
        match &mut self.columns[col].1 {
            Column::Str(x) => x.push(v.to_string()),
            _ => panic!("column {col} of {} is not str", self.name),
        }
    }
    /// Every column has the same length (checked at the end of a run).
    pub fn check(&self) -> Result<(), String> {
        let n = self.rows();
        for (name, c) in &self.columns {
            if c.len() != n {
                return Err(format!("table {}: column {name} has {} rows, expected {n}", self.name, c.len()));
            }
        }
        Ok(())
    }
}
