//! The `prism bench` modes, one module each: renders and flat ray files
//! ([`bench`]), instanced reference sets ([`instanced`]) and moving frames of
//! a two-level scene ([`moving`]), and ray files on a built-in scene
//! ([`replay`]); `render --record` ([`record`]).

pub(crate) mod bench;
pub(crate) mod instanced;
pub(crate) mod moving;
pub(crate) mod record;
pub(crate) mod replay;
