//! The built-in functions: argument checking and dispatch (the name table is
//! `builtin.rs`, a leaf module, so that values can hold a function without depending on
//! the functions' implementations).
//!
//! Functions are ordinary values of the language (`f = flood; f(e)` works and assigning to a
//! built-in's name shadows it), so a [`Builtin`] is a small copyable tag that the interpreter
//! looks up by name when no variable of that name exists.

mod args;
mod buckets;
mod classify;
mod events;
mod misc;

pub(crate) use crate::builtin::Builtin;
use crate::datasource::DataSource;
use crate::error::QueryResult;
use crate::value::DataType;

/// What a built-in may need besides its arguments.
pub(crate) struct CallContext<'a> {
    /// Where bucket data comes from.
    pub ds: &'a dyn DataSource,
    /// The current value of the `TIMEINTERVAL` variable, if any.
    pub timeinterval: Option<&'a DataType>,
    /// Caches that live for one run of the program.
    pub state: &'a mut RunState,
}

/// Caches shared by the calls of one run (one time period).
#[derive(Default)]
pub(crate) struct RunState {
    /// Bytes of data text read from buckets by the last call, for the memory budget (the
    /// interpreter takes it after each call).
    pub loaded_bytes: usize,
}

impl Builtin {
    /// Calls the function with already evaluated arguments (which it consumes).
    pub(crate) fn call(
        self,
        args: Vec<DataType>,
        ctx: &mut CallContext<'_>,
    ) -> QueryResult<DataType> {
        match self {
            Builtin::QueryBucket => buckets::query_bucket(args, ctx),
            Builtin::QueryBucketNames => buckets::query_bucket_names(args, ctx),
            Builtin::FindBucket => buckets::find_bucket(args, ctx),
            Builtin::Flood => events::flood(args),
            Builtin::MergeEventsByKeys => events::merge_events_by_keys(args),
            Builtin::ChunkEventsByKey => events::chunk_events_by_key(args),
            Builtin::SortByDuration => events::sort_by_duration(args),
            Builtin::SortByTimestamp => events::sort_by_timestamp(args),
            Builtin::SumDurations => events::sum_durations(args),
            Builtin::LimitEvents => events::limit_events(args),
            Builtin::FilterKeyvals => events::filter_keyvals(args, true),
            Builtin::ExcludeKeyvals => events::filter_keyvals(args, false),
            Builtin::FilterKeyvalsRegex => classify::filter_keyvals_regex(args),
            Builtin::FilterPeriodIntersect => events::filter_period_intersect(args),
            Builtin::PeriodUnion => events::period_union(args),
            Builtin::UnionNoOverlap => events::union_no_overlap(args),
            Builtin::SplitUrlEvents => events::split_url_events(args),
            Builtin::Concat => events::concat(args),
            Builtin::Categorize => classify::categorize(args),
            Builtin::Tag => classify::tag(args),
            Builtin::Contains => misc::contains(args),
            Builtin::Print => misc::print(args),
        }
    }
}
