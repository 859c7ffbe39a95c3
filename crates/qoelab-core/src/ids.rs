//! Typed indices: a flow id cannot index the links, a config index cannot stand for a runtime
//! index. Each id is a plain `u32` (`u16` for nodes: the wire format's address width) and indexes
//! its own [`IdVec`].

use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// An index newtype.
pub trait Id: Copy + Eq + Ord + std::fmt::Debug {
    fn from_index(i: usize) -> Self;
    fn index(self) -> usize;
}

/// Plain indices (e.g. of application actions) are ids too.
impl Id for usize {
    #[inline]
    fn from_index(i: usize) -> Self {
        i
    }
    #[inline]
    fn index(self) -> usize {
        self
    }
}

macro_rules! id {
    ($(#[$m:meta])* $name:ident, $repr:ty) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub $repr);
        impl Id for $name {
            #[inline]
            fn from_index(i: usize) -> Self {
                debug_assert!(i <= <$repr>::MAX as usize, concat!(stringify!($name), " overflow"));
                $name(i as $repr)
            }
            #[inline]
            fn index(self) -> usize {
                self.0 as usize
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id!(
    /// A flow: one half-connection or datagram flow (the `flow` column of the tables).
    FlowId, u32
);
id!(
    /// A unidirectional link.
    LinkId, u32
);
id!(
    /// A node (host or router).
    NodeId, u16
);
id!(
    /// An endpoint attached to a node.
    EpId, u32
);
id!(
    /// A video client at run time (Poisson sessions add clients; the config entry index is not
    /// a client id).
    ClientId, u32
);

id!(
    /// A web page load at run time.
    PageId, u32
);

/// A vector indexed by one id type.
#[derive(Clone, Debug)]
pub struct IdVec<I: Id, T> {
    v: Vec<T>,
    _id: PhantomData<I>,
}

impl<I: Id, T> Default for IdVec<I, T> {
    fn default() -> Self {
        IdVec { v: Vec::new(), _id: PhantomData }
    }
}

impl<I: Id, T> IdVec<I, T> {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn with_capacity(n: usize) -> Self {
        IdVec { v: Vec::with_capacity(n), _id: PhantomData }
    }
    /// Append; returns the new element's id.
    pub fn push(&mut self, x: T) -> I {
        self.v.push(x);
        I::from_index(self.v.len() - 1)
    }
    /// The id the next `push` returns.
    pub fn next_id(&self) -> I {
        I::from_index(self.v.len())
    }
    pub fn len(&self) -> usize {
        self.v.len()
    }
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.v.iter()
    }
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.v.iter_mut()
    }
    /// (id, element) pairs.
    pub fn iter_enumerated(&self) -> impl Iterator<Item = (I, &T)> {
        self.v.iter().enumerate().map(|(i, x)| (I::from_index(i), x))
    }
    pub fn ids(&self) -> impl Iterator<Item = I> {
        (0..self.v.len()).map(I::from_index)
    }
    pub fn get(&self, i: I) -> Option<&T> {
        self.v.get(i.index())
    }
    pub fn as_slice(&self) -> &[T] {
        &self.v
    }
}

impl<I: Id, T> From<Vec<T>> for IdVec<I, T> {
    fn from(v: Vec<T>) -> Self {
        IdVec { v, _id: PhantomData }
    }
}

impl<I: Id, T> Index<I> for IdVec<I, T> {
    type Output = T;
    #[inline]
    fn index(&self, i: I) -> &T {
        &self.v[i.index()]
    }
}

impl<I: Id, T> IndexMut<I> for IdVec<I, T> {
    #[inline]
    fn index_mut(&mut self, i: I) -> &mut T {
        &mut self.v[i.index()]
    }
}

impl<'a, I: Id, T> IntoIterator for &'a IdVec<I, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.v.iter()
    }
}

impl<'a, I: Id, T> IntoIterator for &'a mut IdVec<I, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.v.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn ids_index_their_own_vectors() {
        let mut flows: IdVec<FlowId, &str> = IdVec::new();
        assert_eq!(flows.next_id(), FlowId(0));
        let a = flows.push("a");
        let b = flows.push("b");
        assert_eq!((a, b), (FlowId(0), FlowId(1)));
        assert_eq!(flows[b], "b");
        flows[a] = "z";
        assert_eq!(flows.iter_enumerated().map(|(i, x)| (i.0, *x)).collect::<Vec<_>>(), vec![(0, "z"), (1, "b")]);
        assert_eq!(NodeId::from_index(7).index(), 7);
    }
}
