//! Evaluation of a parsed program for one time period.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use aw_models::TimeInterval;

use crate::datasource::DataSource;
use crate::error::{QueryError, QueryResult};
use crate::functions::{Builtin, CallContext, RunState};
use crate::memory::{Charge, MemoryBudget};
use crate::parser::{BinOp, Expr, Stmt};
use crate::value::{DataType, MAX_VALUE_DEPTH};

/// One run of a program: a flat variable environment plus the data source.
///
/// Built-in functions are not stored in the environment; a name that is not a variable
/// falls back to the built-in of that name, which gives the same semantics (assigning to the
/// name shadows the built-in) without filling a map for every period.
pub(crate) struct Interpreter<'a> {
    vars: HashMap<String, DataType>,
    ds: &'a dyn DataSource,
    state: RunState,
    /// When evaluation must stop; checked before every statement and function call, and
    /// inside the transforms' loops (`budget.rs`).
    deadline: Option<Instant>,
    /// The estimated size ([`DataType::weight`]) of each variable, and their sum.
    weights: HashMap<String, usize>,
    held: usize,
    /// The size of the values copied or moved out of variables, and of the results of
    /// calls, during the current statement (an over-estimate: they may be dropped before it
    /// ends).
    temp: usize,
    /// The data text read from buckets in this period (it stays until the period ends).
    loaded: usize,
    /// This evaluation's share of the request's memory budget (`memory.rs`).
    charge: Charge,
}

impl<'a> Interpreter<'a> {
    /// A fresh environment for `period`: `TIMEINTERVAL` is set to it with `+00:00` offsets.
    /// What it holds is charged to `budget`, the request's.
    pub(crate) fn new(
        ds: &'a dyn DataSource,
        period: &TimeInterval,
        budget: Arc<MemoryBudget>,
    ) -> Self {
        let mut vars = HashMap::new();
        vars.insert(
            "TIMEINTERVAL".to_string(),
            DataType::String(period.to_string()),
        );
        let mut weights = HashMap::new();
        let held = vars.values().map(DataType::weight).sum();
        weights.insert("TIMEINTERVAL".to_string(), held);
        Interpreter {
            vars,
            ds,
            state: RunState::default(),
            deadline: None,
            weights,
            held,
            temp: 0,
            loaded: 0,
            charge: Charge::new(budget),
        }
    }

    /// Stops evaluation with [`QueryError::Timeout`] once `deadline` has passed.
    pub(crate) fn with_deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    fn check_deadline(&self) -> QueryResult<()> {
        let passed =
            crate::budget::has_expired() || self.deadline.is_some_and(|d| Instant::now() >= d);
        if passed {
            return Err(QueryError::Timeout(
                "The query ran longer than the server's time budget (query_timeout)".to_string(),
            ));
        }
        Ok(())
    }

    /// Runs every statement and returns the final value of `RETURN`.
    ///
    /// The returned [`Charge`] holds the estimated size of the answer's JSON form (checked
    /// against the budget): keep it until the JSON is built and sent on.
    pub(crate) fn run(mut self, program: &[Stmt]) -> QueryResult<(DataType, Charge)> {
        // The transforms' loops check the same deadline (`budget.rs`).
        let _budget = crate::budget::enter(self.deadline);
        self.block(program)?;
        let result = self.vars.remove("RETURN").ok_or(QueryError::EmptyQuery)?;
        let mut charge = self.charge;
        let output = result.weight().saturating_add(result.json_weight());
        // The variables are given back; the answer and its JSON form are held.
        let checked = charge.set(output, 0);
        // The other variables may hold large event lists.
        crate::reaper::drop_later((self.vars, self.state));
        checked.map(|()| (result, charge))
    }

    fn block(&mut self, stmts: &[Stmt]) -> QueryResult<()> {
        for s in stmts {
            self.statement(s)?;
        }
        Ok(())
    }

    /// Updates this evaluation's charge and refuses a memory use of `bytes` more (a copy
    /// about to be made) when the request would pass its budget.
    fn check_memory(&mut self, bytes: usize) -> QueryResult<()> {
        let holds = self
            .held
            .saturating_add(self.temp)
            .saturating_add(self.loaded);
        self.charge.set(holds, bytes)
    }

    /// Stores a variable, keeping the memory estimate.
    fn assign(&mut self, name: &str, value: DataType) -> QueryResult<()> {
        let weight = value.weight();
        let old = self.weights.insert(name.to_string(), weight).unwrap_or(0);
        self.held = self.held.saturating_sub(old).saturating_add(weight);
        self.vars.insert(name.to_string(), value);
        self.check_memory(0)
    }

    fn statement(&mut self, stmt: &Stmt) -> QueryResult<()> {
        self.check_deadline()?;
        self.temp = 0;
        match stmt {
            Stmt::Assign(name, e) => {
                let v = self.eval(e)?;
                self.temp = 0;
                self.assign(name, v)?;
            }
            Stmt::Expr(e) => {
                self.eval(e)?;
            }
            Stmt::Return { target, expr } => {
                let v = self.eval(expr)?;
                self.temp = 0;
                let ret = match target {
                    Some(name) => {
                        self.assign(name, v)?;
                        DataType::None
                    }
                    None => v,
                };
                self.assign("RETURN", ret)?;
            }
            Stmt::If {
                branches,
                otherwise,
            } => return self.if_chain(branches, otherwise.as_deref()),
        }
        Ok(())
    }

    fn if_chain(
        &mut self,
        branches: &[(Expr, Vec<Stmt>)],
        otherwise: Option<&[Stmt]>,
    ) -> QueryResult<()> {
        for (cond, body) in branches {
            let c = self.eval(cond)?;
            if equals(&c, &DataType::Bool(true))? {
                return self.block(body);
            }
        }
        match otherwise {
            Some(body) => self.block(body),
            None => Ok(()),
        }
    }

    fn eval(&mut self, e: &Expr) -> QueryResult<DataType> {
        match e {
            Expr::Number(n) => Ok(DataType::Number(*n)),
            Expr::Bool(b) => Ok(DataType::Bool(*b)),
            Expr::Str(s) => Ok(DataType::String(s.clone())),
            Expr::Var { name, movable } => self.read(name, *movable),
            Expr::Call { name, args } => self.call(name, args),
            Expr::List(items) => self.list(items),
            Expr::Dict(entries) => self.dict(entries),
            Expr::Chain { first, rest } => self.chain(first, rest),
        }
    }

    /// A variable read: a copy of the value, or the value itself at its last use.
    fn read(&mut self, name: &str, movable: bool) -> QueryResult<DataType> {
        let found = if movable {
            // The value leaves the variables but stays alive in this statement.
            let weight = self.weights.remove(name).unwrap_or(0);
            self.held = self.held.saturating_sub(weight);
            self.temp = self.temp.saturating_add(weight);
            self.vars.remove(name)
        } else {
            match self.vars.get(name) {
                Some(v) => {
                    // Charged before the copy is made.
                    let weight = v.weight();
                    self.check_memory(weight)?;
                    self.temp = self.temp.saturating_add(weight);
                    self.vars.get(name).cloned()
                }
                None => None,
            }
        };
        match found {
            Some(v) => Ok(v),
            None => Builtin::from_name(name)
                .map(DataType::Function)
                .ok_or_else(|| QueryError::VariableNotDefined(name.to_string())),
        }
    }

    fn call(&mut self, name: &str, args: &[Expr]) -> QueryResult<DataType> {
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            values.push(self.eval(a)?);
        }
        let f = match self.vars.get(name) {
            Some(DataType::Function(f)) => *f,
            Some(_) => return Err(QueryError::InvalidType(name.to_string())),
            None => Builtin::from_name(name)
                .ok_or_else(|| QueryError::VariableNotDefined(name.to_string()))?,
        };
        self.check_deadline()?;
        let mut ctx = CallContext {
            ds: self.ds,
            timeinterval: self.vars.get("TIMEINTERVAL"),
            state: &mut self.state,
        };
        let result = f.call(values, &mut ctx);
        // A transform that ran out of time stopped early: its result is partial.
        self.check_deadline()?;
        let result = result?;
        // The result lives until the statement ends (`concat(query_bucket(b), …)` holds many
        // at once); data read from a bucket lives until the period ends.
        self.loaded = self
            .loaded
            .saturating_add(std::mem::take(&mut self.state.loaded_bytes));
        self.temp = self.temp.saturating_add(result.weight());
        self.check_memory(0)?;
        Ok(result)
    }

    fn list(&mut self, items: &[Expr]) -> QueryResult<DataType> {
        let mut values = Vec::with_capacity(items.len());
        for i in items {
            values.push(self.eval(i)?);
        }
        check_depth(DataType::List(values))
    }

    fn dict(&mut self, entries: &[(String, Expr)]) -> QueryResult<DataType> {
        let mut map = BTreeMap::new();
        for (k, v) in entries {
            let v = self.eval(v)?;
            map.insert(k.clone(), v);
        }
        check_depth(DataType::Dict(map))
    }

    fn chain(&mut self, first: &Expr, rest: &[(BinOp, Expr)]) -> QueryResult<DataType> {
        let mut acc = self.eval(first)?;
        for (op, rhs) in rest {
            let r = self.eval(rhs)?;
            acc = binary(*op, acc, r)?;
        }
        Ok(acc)
    }
}

/// Refuses list/dict values nested deeper than [`MAX_VALUE_DEPTH`] (e.g. built by wrapping a
/// variable in a list over and over), which would otherwise make serialising or dropping
/// the value overflow the stack.
fn check_depth(v: DataType) -> QueryResult<DataType> {
    if v.depth() > MAX_VALUE_DEPTH {
        return Err(QueryError::InvalidType(format!(
            "Value is nested too deeply: at most {MAX_VALUE_DEPTH} levels of lists and dicts \
             are allowed"
        )));
    }
    Ok(v)
}

/// The `==` operator: values of the same type compare deeply; None == None is false;
/// different types are an error.
pub(crate) fn equals(a: &DataType, b: &DataType) -> QueryResult<bool> {
    use DataType as D;
    match (a, b) {
        (D::None, D::None) => Ok(false),
        (D::Bool(_), D::Bool(_))
        | (D::Number(_), D::Number(_))
        | (D::String(_), D::String(_))
        | (D::Event(_), D::Event(_))
        | (D::List(_) | D::Events(_), D::List(_) | D::Events(_))
        | (D::Dict(_), D::Dict(_))
        | (D::Function(_), D::Function(_)) => Ok(a.deep_eq(b)),
        _ => Err(QueryError::InvalidType(format!(
            "Cannot compare values of different types {} and {}",
            a.describe(),
            b.describe()
        ))),
    }
}

fn binary(op: BinOp, a: DataType, b: DataType) -> QueryResult<DataType> {
    use DataType as D;
    let not_numbers = |verb: &str| {
        QueryError::InvalidType(format!("Cannot {verb} something that is not a number!"))
    };
    Ok(match op {
        BinOp::Add => match (a, b) {
            (D::Number(x), D::Number(y)) => D::Number(x + y),
            (D::Events(x), D::Events(y)) => {
                let mut x = Arc::unwrap_or_clone(x);
                x.extend(y.iter().cloned());
                D::from_events(x)
            }
            (D::List(x), D::Events(y)) if x.is_empty() => D::Events(y),
            (D::Events(x), D::List(y)) if y.is_empty() => D::Events(x),
            (x @ (D::List(_) | D::Events(_)), y @ (D::List(_) | D::Events(_))) => {
                let mut x = x.into_list().unwrap_or_default();
                x.extend(y.into_list().unwrap_or_default());
                D::List(x)
            }
            (D::String(mut x), D::String(y)) => {
                x.push_str(&y);
                D::String(x)
            }
            (x, y) => {
                return Err(QueryError::InvalidType(format!(
                    "Cannot add {} and {}: only numbers, lists and strings of the same type \
                     can be added",
                    x.describe(),
                    y.describe()
                )))
            }
        },
        BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => {
            let (x, y) = match (a, b) {
                (D::Number(x), D::Number(y)) => (x, y),
                _ => {
                    return Err(not_numbers(match op {
                        BinOp::Sub => "sub",
                        BinOp::Mul => "mul",
                        BinOp::Div => "div",
                        _ => "mod",
                    }))
                }
            };
            D::Number(match op {
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div => {
                    if y == 0.0 {
                        return Err(QueryError::MathError(
                            "Tried to divide by zero!".to_string(),
                        ));
                    }
                    x / y
                }
                _ => x % y,
            })
        }
        BinOp::Eq => D::Bool(equals(&a, &b)?),
    })
}
