//! Prism facade (in progress)
