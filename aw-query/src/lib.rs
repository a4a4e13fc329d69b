//! The ActivityWatch query language (in progress).
