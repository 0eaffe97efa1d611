//! The `prism bench` modes, one module each: renders and flat ray files
//! ([`bench`]), instanced reference sets ([`instanced`]) and moving frames of
//! a two-level scene ([`moving`]).

pub(crate) mod bench;
pub(crate) mod instanced;
pub(crate) mod moving;
