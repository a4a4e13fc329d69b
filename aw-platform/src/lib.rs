//! What the ActivityWatch programs ask of the operating system, in one place, so that the
//! server, aw-sync and the client library agree on it:
//!
//! * [`dirs`]: where ActivityWatch keeps its files (XDG on Linux, the platform's
//!   equivalents elsewhere);
//! * [`disk`]: free space, space reserved ahead of need, durable folder entries;
//! * [`hostname()`]: the device's name, which bucket ids and `/api/0/info` carry;
//! * [`sched`]: how threads ask the kernel for the CPU (short time slices for the datastore
//!   thread, a lower priority for background work);
//! * [`logging`]: the log line format, the level from `LOG_LEVEL`, one new file per start,
//!   and an output that never fails; [`log_throttle`] for warnings input can trigger at any
//!   rate.
//!
//! Nothing here knows about events or buckets; that is `aw-models`.

pub mod dirs;
pub mod disk;
mod hostname;
pub mod log_throttle;
pub mod logging;
pub mod process;
pub mod sched;

pub use hostname::hostname;
