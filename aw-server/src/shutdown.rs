//! Stopping on SIGTERM/SIGINT: promptly, without cutting off a request in flight.
//!
//! Rocket's own signal handling closes every connection only after its `grace` period
//! (whole seconds, 2 by default), and a watcher always holds an idle keep-alive connection,
//! so every stop took two seconds. With `grace = 0` Rocket would close idle connections at
//! once, but it would also cut off a response being written: a client whose insert was
//! stored but never answered retries it, and the event is stored twice.
//!
//! So the server handles the signals itself: on the first SIGTERM or SIGINT it marks itself
//! stopping, waits until no request is in flight (counted by the [`InFlight`] fairing, from
//! `on_request` until Rocket drops the request after sending its response, waiting at most
//! [`DRAIN_LIMIT`]), then asks Rocket to shut down with no grace, which closes the idle
//! connections at once. `server::run` then makes the final commit. A second signal stops
//! without waiting.
//!
//! The signal handlers are installed by [`StopSignals::listen`] before Rocket is built, so
//! before the server says it is listening: a SIGTERM sent the moment the "listening" line
//! appears is kept until the stop task runs, and never takes the default action of killing
//! the process without its final commit (a race that once failed CI's clean-stop check).
//!
//! A request that arrives once the server is stopping is answered 503 without running its
//! handler: otherwise one arriving just after the drain saw zero could be stored and then
//! cut off unanswered. Each request is counted before it looks at the flag, and the drain
//! sets the flag before it looks at the count, so every request is either waited for or
//! refused.

use rocket::fairing::{Fairing, Info, Kind};
use rocket::tokio::sync::Notify;
use rocket::{Data, Request};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::ApiError;

/// How long a stop waits for requests in flight (a long query or export) before it closes
/// their connections anyway.
pub(crate) const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// Counts the requests Rocket is handling, and refuses new ones once the server is stopping.
#[derive(Default)]
pub(crate) struct InFlight {
    count: Arc<AtomicUsize>,
    /// Told when the count falls to zero (the drain waits on it; no polling).
    idle: Arc<Notify>,
    stopping: Arc<AtomicBool>,
    /// Filled by the caller, taken by the stop task at liftoff.
    signals: SignalSlot,
}

/// Where the caller puts the signal handlers once it has installed them (before the server
/// can say it listens), for the stop task to take at liftoff. Installed only once the
/// database is open: until then a signal stops the process at once, as the default action
/// does (a long salvage or migration is stopped by Ctrl-C; SQLite keeps the file whole).
#[derive(Clone, Default)]
pub(crate) struct SignalSlot(Arc<Mutex<Option<StopSignals>>>);

impl SignalSlot {
    /// Hands over the installed handlers.
    pub(crate) fn fill(&self, signals: StopSignals) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(signals);
    }

    fn take(&self) -> Option<StopSignals> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl InFlight {
    /// A counter whose stop task waits on the signals put in `signals`.
    pub(crate) fn new(signals: SignalSlot) -> InFlight {
        InFlight {
            signals,
            ..InFlight::default()
        }
    }

    /// The number of requests in flight, as the fairing keeps it (`GET /api/0/health`
    /// shows it, so a client can see that its request reached the server).
    pub(crate) fn counter(&self) -> RequestsInFlight {
        RequestsInFlight(self.count.clone())
    }
}

/// A reader of [`InFlight`]'s count.
pub(crate) struct RequestsInFlight(Arc<AtomicUsize>);

impl RequestsInFlight {
    /// Requests Rocket is handling now, the caller's own included.
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Kept in a request's local cache: counts the request until Rocket drops it, which is after
/// its response was handed to the connection, or when the connection went away mid-request
/// (so a cancelled request is never counted forever).
struct Counted(Arc<AtomicUsize>, Arc<Notify>);

impl Drop for Counted {
    fn drop(&mut self) {
        if self.0.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.1.notify_waiters();
        }
    }
}

#[rocket::async_trait]
impl Fairing for InFlight {
    fn info(&self) -> Info {
        Info {
            name: "Requests in flight (for a prompt, clean stop)",
            kind: Kind::Request | Kind::Liftoff,
        }
    }

    async fn on_liftoff(&self, rocket: &rocket::Rocket<rocket::Orbit>) {
        let shutdown = rocket.shutdown();
        let in_flight = self.count.clone();
        let idle = self.idle.clone();
        let stopping = self.stopping.clone();
        let taken = self.signals.take();
        // Without handlers installed by the caller, install them now (late, but working).
        let mut signals = taken.unwrap_or_else(StopSignals::listen);
        rocket::tokio::spawn(async move {
            signals.recv().await;
            log::info!("Stopping: finishing the requests in flight");
            stopping.store(true, Ordering::SeqCst);
            let deadline = Instant::now() + DRAIN_LIMIT;
            rocket::tokio::select! {
                () = drain(&in_flight, &idle, deadline) => {}
                () = signals.recv() => log::info!("Second signal: stopping at once"),
            }
            shutdown.notify();
        });
    }

    async fn on_request(&self, req: &mut Request<'_>, _: &mut Data<'_>) {
        let (count, idle) = (self.count.clone(), self.idle.clone());
        req.local_cache(move || {
            count.fetch_add(1, Ordering::SeqCst);
            Counted(count, idle)
        });
        if self.stopping.load(Ordering::SeqCst) {
            crate::security::reject(
                req,
                ApiError::unavailable("The server is stopping; try again when it is back"),
            );
        }
    }
}

/// Waits until no request is in flight, or `deadline`: woken by the last request's end,
/// never polling.
async fn drain(in_flight: &AtomicUsize, idle: &Notify, deadline: Instant) {
    let deadline = rocket::tokio::time::Instant::from_std(deadline);
    loop {
        // Registered before the count is read, so a request ending in between still wakes.
        let notified = idle.notified();
        rocket::tokio::pin!(notified);
        notified.as_mut().enable();
        if in_flight.load(Ordering::SeqCst) == 0 {
            return;
        }
        if rocket::tokio::time::timeout_at(deadline, notified)
            .await
            .is_err()
        {
            return;
        }
    }
}

/// SIGTERM and SIGINT (Ctrl-C), caught from the moment [`StopSignals::listen`] returns: a
/// signal that arrives before anyone waits is kept, and [`StopSignals::recv`] returns at
/// once for it.
pub(crate) struct StopSignals {
    #[cfg(unix)]
    handlers: Option<(
        rocket::tokio::signal::unix::Signal,
        rocket::tokio::signal::unix::Signal,
    )>,
}

impl StopSignals {
    /// Installs the handlers. Must run inside the Tokio runtime (`Runtime::enter`). If they
    /// cannot be installed, says so; the process can still be killed, and its last commit is
    /// then the idle commit's.
    pub(crate) fn listen() -> StopSignals {
        #[cfg(unix)]
        {
            use rocket::tokio::signal::unix::{signal, SignalKind};
            match (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) {
                (Ok(term), Ok(int)) => StopSignals {
                    handlers: Some((term, int)),
                },
                (Err(e), _) | (_, Err(e)) => {
                    log::error!("Cannot listen for SIGTERM/SIGINT: {e}");
                    StopSignals { handlers: None }
                }
            }
        }
        #[cfg(not(unix))]
        {
            StopSignals {}
        }
    }

    /// Resolves on the next SIGTERM or SIGINT (never, if the handlers are missing).
    pub(crate) async fn recv(&mut self) {
        #[cfg(unix)]
        match &mut self.handlers {
            Some((term, int)) => {
                rocket::tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            None => std::future::pending::<()>().await,
        }
        #[cfg(not(unix))]
        if rocket::tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
