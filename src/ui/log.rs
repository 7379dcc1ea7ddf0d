//! `UiLog`: a listener that records every notice, with the views tests and tools compare across
//! rollback modes.

use super::director::UiListener;
use super::{Subscription, UiCall, UiEvent, UiNotice};
use std::collections::BTreeMap;

/// A [`UiListener`] that records every notice in order.
///
/// ```
/// use rollback_abilities::ui::UiLog;
/// let log = UiLog::default();
/// assert!(log.confirmed().is_empty());
/// assert!(log.check_invariants().is_ok());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UiLog {
    /// Every notice, in order.
    pub notices: Vec<UiNotice>,
}

impl UiListener for UiLog {
    fn shown(&mut self, sub: Subscription, event: &UiEvent, predicted: bool) {
        self.notices.push(UiNotice {
            subscription: sub,
            call: UiCall::Shown,
            event: *event,
            predicted,
        });
    }
    fn retracted(&mut self, sub: Subscription, event: &UiEvent) {
        self.notices.push(UiNotice {
            subscription: sub,
            call: UiCall::Retracted,
            event: *event,
            predicted: true,
        });
    }
    fn confirmed(&mut self, sub: Subscription, event: &UiEvent) {
        self.notices.push(UiNotice {
            subscription: sub,
            call: UiCall::Confirmed,
            event: *event,
            predicted: false,
        });
    }
}

impl UiLog {
    /// How many notices satisfy `f`.
    pub fn count(&self, f: impl Fn(&UiNotice) -> bool) -> usize {
        self.notices.iter().filter(|n| f(n)).count()
    }

    /// The confirmed events, in the order they were confirmed, with their subscriptions: two
    /// runs of the same match — plain stepping, rollbacks at any depth, peers on a lossy
    /// network — give equal confirmed logs.
    pub fn confirmed(&self) -> Vec<(Subscription, UiEvent)> {
        self.notices
            .iter()
            .filter(|n| n.call == UiCall::Confirmed)
            .map(|n| (n.subscription, n.event))
            .collect()
    }

    /// What a viewer finally saw, in the order first shown: every `Shown` not taken back by a
    /// later `Retracted`.
    pub fn standing(&self) -> Vec<(Subscription, UiEvent)> {
        let mut keep = vec![true; self.notices.len()];
        let mut open: BTreeMap<(Subscription, super::UiEventKey), Vec<usize>> = BTreeMap::new();
        for (i, n) in self.notices.iter().enumerate() {
            match n.call {
                UiCall::Shown => open.entry((n.subscription, n.event.key)).or_default().push(i),
                UiCall::Retracted => {
                    keep[i] = false;
                    if let Some(j) = open.get_mut(&(n.subscription, n.event.key)).and_then(|v| {
                        let at = v.iter().rposition(|j| self.notices[*j].event == n.event)?;
                        Some(v.remove(at))
                    }) {
                        keep[j] = false;
                    }
                }
                UiCall::Confirmed => keep[i] = false,
            }
        }
        self.notices
            .iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(n, _)| (n.subscription, n.event))
            .collect()
    }

    /// Checks the listener contract per subscription: an event is never shown twice while it
    /// stands, every retraction and confirmation follows a show of the same event, a confirmed
    /// event is never retracted, and nothing is confirmed twice. The error names the first
    /// broken notice.
    pub fn check_invariants(&self) -> Result<(), String> {
        #[derive(Clone, Copy, PartialEq, Eq)]
        enum State {
            Standing,
            Confirmed,
        }
        let mut state: BTreeMap<(Subscription, super::UiEventKey), (UiEvent, State)> =
            BTreeMap::new();
        for (i, n) in self.notices.iter().enumerate() {
            let fail = |what: &str| Err(format!("notice {i}: {what}: {n:?}"));
            let k = (n.subscription, n.event.key);
            match (n.call, state.get(&k).copied()) {
                (UiCall::Shown, None) => {
                    state.insert(k, (n.event, State::Standing));
                }
                (UiCall::Shown, Some(_)) => return fail("shown while an event of its key stands"),
                (UiCall::Retracted, Some((e, State::Standing))) if e == n.event => {
                    state.remove(&k);
                }
                (UiCall::Retracted, _) => {
                    return fail("retraction of an event that is not standing");
                }
                (UiCall::Confirmed, Some((e, State::Standing))) if e == n.event => {
                    state.insert(k, (e, State::Confirmed));
                }
                (UiCall::Confirmed, _) => return fail("confirmation of an event not standing"),
            }
        }
        Ok(())
    }
}
