"""MirrorHeartbeatConnector: a heartbeat (source alias, target alias, time) into the
target's `heartbeats` topic every `emit.heartbeats.interval.seconds`. With flows both ways
(MM2 runs the reverse pair's heartbeats even for a disabled flow), the source's
`heartbeats` are then mirrored to `<source>.heartbeats` by the data path."""

from __future__ import annotations

from odradek.mirror.clients import ClusterClient
from odradek.mirror.config import Flow
from odradek.mirror.formats import Heartbeat
from odradek.mirror.topic_sync import create_internal
from odradek.runtime.clock import now_ms


class HeartbeatEmitter:
    def __init__(self, flow: Flow, target: ClusterClient) -> None:
        self.flow = flow
        self.target = target

    async def create_topic(self) -> None:
        await create_internal(self.target, self.flow, "heartbeats", self.flow.heartbeats_topic)

    async def beat(self) -> None:
        now = now_ms()
        heartbeat = Heartbeat(self.flow.source, self.flow.target, now)
        self.target.produce(self.flow.heartbeats_topic, heartbeat.key(), heartbeat.value(), now)
        await self.target.flush()
