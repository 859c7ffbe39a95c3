//! A web page as the flow model sees it: objects (transfers) with a size in bytes on the wire, an
//! origin (host name, as an index), a TLS flag and at most one parent. A transfer is enabled when
//! its parent has finished; objects without a parent are enabled at t = 0.

/// "No transfer" in queue links.
pub const NONE: u32 = u32::MAX;

/// One web object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Object {
    /// Bytes on the wire (response body + headers), >= 1.
    pub size: u64,
    /// Origin index (one server per host name).
    pub origin: u32,
    /// Loaded over HTTPS (a new connection costs two more RTTs; connections are reused only for
    /// the same origin and the same TLS flag).
    pub tls: bool,
    /// The object whose completion enables this one (must have a smaller index).
    pub parent: Option<u32>,
}

/// A checked page: parents precede their children, so the dependency graph is a forest.
#[derive(Clone, Debug)]
pub struct Page {
    pub objects: Vec<Object>,
    /// Children of object i: `child_list[child_start[i]..child_start[i + 1]]`, in index order.
    child_start: Vec<u32>,
    child_list: Vec<u32>,
    /// Objects enabled at t = 0, in index order.
    roots: Vec<u32>,
    pub n_origins: u32,
    pub total_bytes: u64,
}

impl Page {
    /// Check and index `objects`. Errors name the object (index) and the problem.
    pub fn new(objects: Vec<Object>) -> Result<Page, String> {
        if objects.is_empty() {
            return Err("page: expected at least one object, found none".into());
        }
        if objects.len() >= NONE as usize {
            return Err("page: too many objects".into());
        }
        let mut counts = vec![0u32; objects.len() + 1];
        let mut roots = Vec::new();
        let mut n_origins = 0;
        let mut total: u64 = 0;
        for (i, o) in objects.iter().enumerate() {
            if o.size == 0 {
                return Err(format!("object {i}: expected size >= 1 byte, found 0"));
            }
            // (the model counts nano-bytes in 64 bits: size x 10^9 must fit; above ~1.8 x 10^10 it
            // wrapped and gave a wrong load time)
            if o.size > 1 << 34 {
                return Err(format!("object {i}: expected size <= 2^34 bytes (16 GiB), found {}", o.size));
            }
            total = total.saturating_add(o.size);
            n_origins = n_origins.max(o.origin + 1);
            match o.parent {
                None => roots.push(i as u32),
                Some(p) if (p as usize) < i => counts[p as usize] += 1,
                Some(p) => return Err(format!("object {i}: expected a parent index < {i}, found {p}")),
            }
        }
        let mut child_start = vec![0u32; objects.len() + 1];
        for i in 0..objects.len() {
            child_start[i + 1] = child_start[i] + counts[i];
        }
        let mut fill = child_start.clone();
        let mut child_list = vec![0u32; child_start[objects.len()] as usize];
        for (i, o) in objects.iter().enumerate() {
            if let Some(p) = o.parent {
                child_list[fill[p as usize] as usize] = i as u32;
                fill[p as usize] += 1;
            }
        }
        Ok(Page { objects, child_start, child_list, roots, n_origins, total_bytes: total })
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    pub fn children(&self, i: u32) -> &[u32] {
        &self.child_list[self.child_start[i as usize] as usize..self.child_start[i as usize + 1] as usize]
    }

    pub fn roots(&self) -> &[u32] {
        &self.roots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(size: u64, parent: Option<u32>) -> Object {
        Object { size, origin: 0, tls: false, parent }
    }

    #[test]
    fn children_and_roots() {
        let p = Page::new(vec![o(10, None), o(5, Some(0)), o(5, None), o(7, Some(0)), o(1, Some(3))]).unwrap();
        assert_eq!(p.roots(), &[0, 2]);
        assert_eq!(p.children(0), &[1, 3]);
        assert_eq!(p.children(3), &[4]);
        assert!(p.children(4).is_empty());
        assert_eq!(p.total_bytes, 28);
    }

    #[test]
    fn rejects_bad_pages() {
        assert!(Page::new(vec![]).is_err());
        assert!(Page::new(vec![o(0, None)]).unwrap_err().contains("object 0"));
        assert!(Page::new(vec![o(1, Some(0))]).unwrap_err().contains("parent"));
    }
}
