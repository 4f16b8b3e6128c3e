"""A disposed session is freed by reference counting alone (the daemon disposes of each one)."""

from __future__ import annotations

import gc
import weakref

from pumice.framework import run_actions
from pumice.framework.configfile import load_default_config
from pumice.framework.host import PluginHost
from pumice.framework.session import RecordingCommitter, Session
from support.builders import add_job, cluster


def test_a_disposed_session_leaves_nothing_for_the_collector() -> None:
    snap = cluster(node_count=4)
    add_job(snap, "j", tasks=3, min_available=3)
    session = Session.open(
        snap.clone(), load_default_config(), PluginHost.discover(), committer=RecordingCommitter()
    )
    run_actions(session)
    alive = [weakref.ref(plugin) for _, _, plugin in session.plugins]
    alive += [weakref.ref(session.table), weakref.ref(session)]
    gc.disable()
    try:
        session.dispose()
        del session
        assert [ref() for ref in alive] == [None] * len(alive)
    finally:
        gc.enable()


def test_without_dispose_the_session_is_a_cycle() -> None:
    # the reason dispose exists: plugins, their view and the session refer to one another
    session = Session.open(
        cluster(node_count=2), load_default_config(), PluginHost.discover(),
        committer=RecordingCommitter(),
    )  # fmt: skip
    ref = weakref.ref(session)
    gc.disable()
    try:
        session.close()
        del session
        assert ref() is not None
    finally:
        gc.enable()
        gc.collect()
