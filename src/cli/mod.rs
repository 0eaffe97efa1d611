//! The `prism bench` modes, one module each: renders and flat ray files
//! ([`bench`]), instanced reference sets ([`instanced`]) and moving frames of
//! a two-level scene ([`moving`]), and ray files on a built-in scene
//! ([`replay`]); `render --record` ([`record`]); `animate` under a frame
//! budget ([`animate`], its plot [`plot`]).

pub(crate) mod animate;
pub(crate) mod bench;
pub(crate) mod instanced;
pub(crate) mod moving;
pub(crate) mod plot;
pub(crate) mod record;
pub(crate) mod replay;
