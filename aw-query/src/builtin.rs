//! The names of the built-in functions: a small copyable tag per function, which the
//! language's values can hold (`f = flood; f(e)`). A leaf module: `value.rs` depends on it,
//! and `functions/` implements the calls, so neither depends on the other in a circle.

macro_rules! builtins {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// A built-in function.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum Builtin {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant,
            )*
        }

        impl Builtin {
            /// Every built-in.
            #[cfg(test)]
            pub(crate) const ALL: &'static [Builtin] = &[$(Builtin::$variant),*];

            /// The name programs call it by.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Builtin::$variant => $name,)*
                }
            }

            /// The built-in called `name`, if any.
            pub(crate) fn from_name(name: &str) -> Option<Builtin> {
                match name {
                    $($name => Some(Builtin::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

builtins! {
    QueryBucket => "query_bucket",
    QueryBucketNames => "query_bucket_names",
    FindBucket => "find_bucket",
    Flood => "flood",
    MergeEventsByKeys => "merge_events_by_keys",
    ChunkEventsByKey => "chunk_events_by_key",
    SortByDuration => "sort_by_duration",
    SortByTimestamp => "sort_by_timestamp",
    SumDurations => "sum_durations",
    LimitEvents => "limit_events",
    FilterKeyvals => "filter_keyvals",
    ExcludeKeyvals => "exclude_keyvals",
    FilterKeyvalsRegex => "filter_keyvals_regex",
    FilterPeriodIntersect => "filter_period_intersect",
    PeriodUnion => "period_union",
    UnionNoOverlap => "union_no_overlap",
    SplitUrlEvents => "split_url_events",
    Concat => "concat",
    Categorize => "categorize",
    Tag => "tag",
    Contains => "contains",
    Print => "print",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for b in Builtin::ALL {
            assert_eq!(Builtin::from_name(b.name()), Some(*b));
        }
        for py_only in ["query_bucket_eventcount", "simplify_window_titles", "nop"] {
            assert_eq!(Builtin::from_name(py_only), None);
        }
    }
}
