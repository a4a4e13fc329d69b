//! Client library for the ActivityWatch server.
