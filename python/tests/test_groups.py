"""Consumer groups: ack, nack (with delay), reject, in_progress, credit,
redelivery when a member goes away, callbacks."""

import threading
import time

import pytest

import tinybroker
from conftest import wait_until


def test_ack_nack_reject(client):
    client.create_group("g1", "g1.>", ack_wait=5)
    dead = client.subscribe("$dlq.g1")
    worker = client.join("g1", "g1.>")
    client.publish_many([("g1.a", "ack"), ("g1.b", "nack"), ("g1.c", "reject")])
    jobs = {d.text: d for d in (worker.get(5) for _ in range(3))}
    assert all(d.is_group and d.attempt == 1 for d in jobs.values())
    assert jobs["ack"].ack() and not jobs["ack"].ack()  # once
    assert jobs["nack"].nack()
    assert jobs["reject"].reject()
    again = worker.get(5)
    assert (again.text, again.attempt) == ("nack", 2)
    again.ack()
    letter = dead.get(5)
    assert letter.text == "reject"
    assert letter.headers["x-tinybroker-reason"] == "rejected"
    with pytest.raises(TimeoutError):
        worker.get(0.3)  # the acked one is done


def test_nack_with_delay(client):
    client.create_group("g2", "g2.>", ack_wait=1)
    worker = client.join("g2", "g2.>")
    client.publish("g2.a", "x")
    first = worker.get(5)
    nacked_at = time.monotonic()
    first.nack(delay=0.4)
    again = worker.get(5)
    assert again.attempt == 2
    assert time.monotonic() - nacked_at >= 0.3
    again.ack()


def test_in_progress_holds_off_redelivery(client):
    client.create_group("g3", "g3.>", ack_wait=1)
    worker = client.join("g3", "g3.>")
    client.publish("g3.a", "slow")
    job = worker.get(5)
    for _ in range(5):  # 1.5 s of work, ack_wait 1 s
        time.sleep(0.3)
        assert job.in_progress()
    with pytest.raises(TimeoutError):
        worker.get(0.1)  # not redelivered meanwhile
    assert job.ack()


def test_unanswered_redelivered_to_another_member(broker, client):
    other = tinybroker.connect(broker.address)
    held = other.join("g4", "g4.>")
    client.publish("g4.a", "job")
    assert held.get(5).attempt == 1
    worker = client.join("g4", "g4.>")
    other.close()  # its stream ends: what it held goes to the others
    again = worker.get(5)
    assert (again.text, again.attempt) == ("job", 2)
    assert again.ack()


def test_credit_is_max_in_flight(client):
    worker = client.join("g5", "g5.>", max_in_flight=2)
    client.publish_many([("g5.a", str(i)) for i in range(5)])
    first, second = worker.get(5), worker.get(5)
    with pytest.raises(TimeoutError):
        worker.get(0.3)  # two unanswered: no credit left
    first.ack()
    third = worker.get(5)
    assert [d.text for d in (first, second, third)] == ["0", "1", "2"]
    with pytest.raises(TimeoutError):
        worker.get(0.2)
    second.ack()
    third.ack()
    assert sorted([worker.get(5).text, worker.get(5).text]) == ["3", "4"]


def test_join_with_callback(client):
    done, seen = threading.Event(), []

    def handle(job):
        seen.append((job.text, job.attempt))
        if job.attempt == 1 and job.text == "retry":
            job.nack()
        else:
            job.ack()
        if len(seen) == 3:
            done.set()
    client.join("g6", "g6.>", handle, max_in_flight=4)
    client.publish_many([("g6.a", "ok"), ("g6.b", "retry")])
    assert done.wait(5)
    assert sorted(seen) == [("ok", 1), ("retry", 1), ("retry", 2)]


def test_group_pattern_conflict_and_admin(client):
    client.join("g7", "g7.>")
    with pytest.raises(tinybroker.SubscribeError) as refused:
        client.join("g7", "other.>")
    assert refused.value.reason == "group_pattern_conflict"
    assert refused.value.group == "g7"
    assert "g7" in [g.name for g in client.list_groups()]
    client.publish("g7.x", b"held")
    with pytest.raises(tinybroker.BrokerError) as unknown:
        client.delete_group("no-such-group")
    assert unknown.value.reason == "unknown_group"


def test_delete_group_ends_membership(client):
    worker = client.join("g8", "g8.>")
    client.delete_group("g8")
    with pytest.raises(tinybroker.SubscriptionEndedError):
        worker.get(5)
    assert not worker.active


def test_unsubscribe_hands_untaken_jobs_on(broker, client):
    other = tinybroker.connect(broker.address)
    leaving = other.join("g9", "g9.>")
    client.publish_many([("g9.a", "1"), ("g9.b", "2")])
    assert wait_until(lambda: len(leaving._inbox) == 2)
    staying = client.join("g9", "g9.>")
    leaving.unsubscribe()  # the two it never took are nacked at once
    jobs = [staying.get(5), staying.get(5)]
    assert sorted(j.text for j in jobs) == ["1", "2"]
    assert [j.attempt for j in jobs] == [2, 2]
    other.close()
