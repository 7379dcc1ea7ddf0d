//! Targeting (F-TGT-01 … F-TGT-03).

use super::*;

// ---------------------------------------------------------------------------------------------
// F-TGT-01 … F-TGT-03 Targeting
// ---------------------------------------------------------------------------------------------

fn ent(index: u32) -> Entity {
    Entity { index, generation: 1 }
}

#[test]
fn f_tgt_01_target_data_constructors_and_views() {
    let p = [int(1), int(2), int(3)];
    let n = [Fx::ZERO, Fx::ONE, Fx::ZERO];
    assert_eq!(TargetData::NONE.view(), TargetView::None);
    assert_eq!(TargetData::default().view(), TargetView::None);
    assert_eq!(TargetData::NONE.first_entity(), None);
    let one = TargetData::entity(ent(3));
    assert_eq!(one.view(), TargetView::Entity(ent(3)));
    assert_eq!(one.first_entity(), Some(ent(3)));
    let many = TargetData::entities(&[ent(1), ent(2), ent(3), ent(4), ent(5)]);
    assert_eq!(many.count, 4, "the data holds four");
    assert_eq!(many.total(), 5, "and says how many it was made from");
    assert!(many.is_longer_than_inline());
    assert_eq!(many.view(), TargetView::Entities(&[ent(1), ent(2), ent(3), ent(4)]));
    assert_eq!(many.first_entity(), Some(ent(1)));
    assert_eq!(TargetData::entities(&[]).view(), TargetView::Entities(&[]));
    assert_eq!(TargetData::entities(&[]).first_entity(), None);
    let hit = TargetData::hit(ent(2), p, n, 0xDEAD);
    assert_eq!(hit.view(), TargetView::Hit { entity: ent(2), point: p, normal: n, part: 0xDEAD });
    assert_eq!(hit.first_entity(), Some(ent(2)));
    let loc = TargetData::location(n, p);
    assert_eq!(loc.view(), TargetView::Location { source: n, target: p });
    assert_eq!(loc.first_entity(), None);
    let bytes = [7u8; 16];
    let custom = TargetData::custom(12, bytes);
    assert_eq!(custom.view(), TargetView::Custom { kind: 12, bytes: &bytes });
    assert_eq!(custom.first_entity(), None);
    // Plain data: the same bytes give the same value.
    let copy: TargetData = bytemuck::pod_read_unaligned(bytemuck::bytes_of(&hit));
    assert_eq!(copy, hit);
    assert_ne!(bytemuck::bytes_of(&hit), bytemuck::bytes_of(&loc));
}

/// A world of four actors (hero first) with one `Worker` on the hero, bound to `player`.
fn targeting_world(player: usize) -> (World<PadProbeGame>, [Entity; 4], AbilityHandle) {
    let mut w = build(WORKERS, WorldConfig { players: 2, ..WorldConfig::default() });
    let es = [actor(&mut w), actor(&mut w), actor(&mut w), actor(&mut w)];
    w.spawn().unwrap();
    w.bind_player(player, es[0]);
    let worker = grant(&mut w, es[0], "Worker");
    (w, es, worker)
}

fn target_reports(h: AbilityHandle) -> Vec<(u32, u16, TaskEvent)> {
    task_reports(h)
}

#[test]
fn f_tgt_02_instant_targeting_queries_at_once_with_the_quantised_aim() {
    let (mut w, es, worker) = targeting_world(1);
    let q = TargetQuery::new(int(10), int(1), 4);
    plan(
        ab(&w, "Worker"),
        &[
            Act::Spawn(
                0,
                TaskSpec::WaitTargetData { confirmation: Confirmation::Instant, query: q },
            ),
            Act::Spawn(
                1,
                TaskSpec::WaitTargetData {
                    confirmation: Confirmation::Instant,
                    query: q.shaped(2, 0),
                },
            ),
        ],
    );
    let aimed = Pad { bits: 0, aim: [16384, -32768] };
    let out = frame_in(&mut w, &[pad(0), aimed], |w| w.try_activate(worker).map(|_| ()).unwrap());
    let aim = [rollback_abilities::num::div(int(16384), int(32767), Fx::ZERO), int(-1)];
    let queries = QUERIES.with(|x| x.borrow().clone());
    assert_eq!(queries.len(), 2);
    assert_eq!(queries[0], (es[0], es[0], aim, q), "player 1's aim, clamped to ±32767");
    assert!(aim[0] > crate::common::fx("0.5") && aim[0] < crate::common::fx("0.50002"));
    assert_eq!(
        target_reports(worker),
        vec![
            (0, 0, TaskEvent::TargetData(TargetData::entities(&[es[1], es[2], es[3]]))),
            (
                0,
                1,
                TaskEvent::TargetData(TargetData::hit(
                    es[3],
                    [aim[0], aim[1], Fx::ZERO],
                    [Fx::ZERO, Fx::ZERO, Fx::ONE],
                    7
                ))
            ),
        ]
    );
    assert_eq!(tasks_ended(&out).len(), 2, "instant targeting ends with its report");
}

#[test]
fn f_tgt_02_user_confirmed_targeting_reports_once_on_confirm() {
    let (mut w, es, worker) = targeting_world(0);
    let q = TargetQuery::new(int(10), int(1), 4);
    plan(
        ab(&w, "Worker"),
        &[Act::Spawn(
            0,
            TaskSpec::WaitTargetData { confirmation: Confirmation::UserConfirmed, query: q },
        )],
    );
    let mut ends = Vec::new();
    let inputs = [0u16, 0, CONFIRM, 0, CONFIRM, CANCEL];
    for (f, bits) in inputs.iter().enumerate() {
        let input = Pad { bits: *bits, aim: [0, 32767] };
        let out = frame_in(&mut w, &[input], |w| {
            if f == 0 {
                w.try_activate(worker).unwrap();
            }
        });
        ends.extend(tasks_ended(&out).into_iter().map(|_| f as u32));
    }
    let reports = target_reports(worker);
    assert_eq!(
        reports.first(),
        Some(&(2, 0, TaskEvent::TargetData(TargetData::entities(&[es[1], es[2], es[3]])))),
        "nothing before the confirm"
    );
    let queries = QUERIES.with(|x| x.borrow().clone());
    assert_eq!(queries[0].2, [Fx::ZERO, Fx::ONE]);
    assert_eq!(ends, vec![2], "the task ends with its confirmed data");
    assert_eq!(reports.len(), 1, "later confirm/cancel inputs reach nothing: {reports:?}");
    // Cancel before confirming.
    let (mut w, _, worker) = targeting_world(0);
    plan(
        ab(&w, "Worker"),
        &[Act::Spawn(
            0,
            TaskSpec::WaitTargetData { confirmation: Confirmation::UserConfirmed, query: q },
        )],
    );
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    let out = frame_in(&mut w, &[pad(CANCEL)], |_| {});
    assert_eq!(target_reports(worker), vec![(1, 0, TaskEvent::TargetCancelled)]);
    assert_eq!(tasks_ended(&out).len(), 1, "a cancelled targeting task ends");
}

#[test]
fn f_tgt_02_custom_multi_reports_every_confirm_until_cancel() {
    let (mut w, es, worker) = targeting_world(0);
    let q = TargetQuery::new(int(10), int(1), 2);
    plan(
        ab(&w, "Worker"),
        &[Act::Spawn(
            0,
            TaskSpec::WaitTargetData { confirmation: Confirmation::CustomMulti, query: q },
        )],
    );
    let mut ends = Vec::new();
    let inputs = [0u16, 0, CONFIRM, 0, CONFIRM, 0, CANCEL, 0, CONFIRM];
    for (f, bits) in inputs.iter().enumerate() {
        let out = frame_in(&mut w, &[pad(*bits)], |w| {
            if f == 0 {
                w.try_activate(worker).unwrap();
            }
        });
        ends.extend(tasks_ended(&out).into_iter().map(|_| f as u32));
    }
    let data = TaskEvent::TargetData(TargetData::entities(&[es[1], es[2]]));
    let reports = target_reports(worker);
    assert_eq!(&reports[..3], &[(2, 0, data), (4, 0, data), (6, 0, TaskEvent::TargetCancelled)]);
    assert_eq!(ends, vec![6], "cancel ends multi-targeting");
    assert_eq!(reports.len(), 3, "{reports:?}");
}

#[test]
fn f_tgt_03_filters_exclude_self_require_tags_game_filter_and_limit() {
    let (mut w, es, worker) = targeting_world(0);
    let targetable = tag(&w, "Targetable");
    w.add_loose_tag(es[2], targetable);
    w.add_loose_tag(es[3], targetable);
    let base = TargetQuery::new(int(10), int(1), 4);
    let mut with_self = base;
    with_self.exclude_self = 0;
    let mut single_with_self = base.shaped(1, 0);
    single_with_self.exclude_self = 0;
    let queries = [
        base,
        with_self,
        base.requiring(targetable),
        base.shaped(0, 7),
        TargetQuery::new(int(10), int(1), 1),
        base.shaped(1, 0),
        single_with_self,
        base.shaped(9, 0),
    ];
    let acts: Vec<Act> = queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            Act::Spawn(
                i as u16,
                TaskSpec::WaitTargetData { confirmation: Confirmation::Instant, query: *q },
            )
        })
        .collect();
    plan(ab(&w, "Worker"), &acts);
    frame(&mut w, |w| w.try_activate(worker).map(|_| ()).unwrap());
    let got: Vec<TargetData> = target_reports(worker)
        .into_iter()
        .map(|r| match r.2 {
            TaskEvent::TargetData(t) => t,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        vec![
            TargetData::entities(&[es[1], es[2], es[3]]),
            TargetData::entities(&[es[0], es[1], es[2], es[3]]),
            TargetData::entities(&[es[2], es[3]]),
            TargetData::entities(&[es[1], es[3]]),
            TargetData::entities(&[es[1]]),
            TargetData::NONE,
            TargetData::entity(es[0]),
            TargetData::NONE,
        ]
    );
    // The avatar counts as self too.
    plan(
        ab(&w, "Worker"),
        &[Act::Spawn(
            0,
            TaskSpec::WaitTargetData { confirmation: Confirmation::Instant, query: base },
        )],
    );
    frame(&mut w, |w| {
        w.end_ability(worker);
        w.set_avatar(es[0], es[1]);
        w.try_activate(worker).map(|_| ()).unwrap();
    });
    assert_eq!(
        task_reports(worker).last().map(|r| r.2),
        Some(TaskEvent::TargetData(TargetData::entities(&[es[2], es[3]])))
    );
    assert_eq!(QUERIES.with(|q| q.borrow().last().map(|x| (x.0, x.1))), Some((es[0], es[1])));
}

#[test]
fn f_tgt_03_persistent_targeting_keeps_the_last_valid_target() {
    for persistent in [true, false] {
        let (mut w, es, worker) = targeting_world(0);
        let targetable = tag(&w, "Targetable");
        w.add_loose_tag(es[2], targetable);
        let mut q = TargetQuery::new(int(10), int(1), 4).requiring(targetable);
        if persistent {
            q = q.persistent();
        }
        plan(
            ab(&w, "Worker"),
            &[Act::Spawn(
                0,
                TaskSpec::WaitTargetData { confirmation: Confirmation::CustomMulti, query: q },
            )],
        );
        for (f, bits) in [0u16, CONFIRM, 0, CONFIRM, 0, CONFIRM].iter().enumerate() {
            frame_in(&mut w, &[pad(*bits)], |w| match f {
                0 => w.try_activate(worker).map(|_| ()).unwrap(),
                2 => w.remove_loose_tag(es[2], targetable),
                4 => w.despawn(es[2]),
                _ => {}
            });
        }
        let got: Vec<(u32, TaskEvent)> =
            target_reports(worker).into_iter().map(|r| (r.0, r.2)).collect();
        let first = TaskEvent::TargetData(TargetData::entities(&[es[2]]));
        let empty = TaskEvent::TargetData(TargetData::entities(&[]));
        let kept =
            if persistent { TaskEvent::TargetData(TargetData::entity(es[2])) } else { empty };
        assert_eq!(got, vec![(1, first), (3, kept), (5, empty)], "persistent: {persistent}");
    }
}
