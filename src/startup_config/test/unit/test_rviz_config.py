"""The stack's RViz config shows only topics the stack has (config/r1_topics.yaml or the pose targets)."""
from pathlib import Path

import yaml

from r1_startup.topics import load_topics

PKG = Path(__file__).resolve().parents[2]
INPUTS = {"/motion_target/target_pose_arm_left", "/motion_target/target_pose_arm_right"}


def test_every_display_topic_exists_in_the_stack():
    config = yaml.safe_load((PKG / "rviz" / "r1_stack.rviz").read_text())
    published = {s.name: s.type for s in load_topics(PKG / "config" / "r1_topics.yaml")}
    displays = config["Visualization Manager"]["Displays"]
    shown = []
    for d in displays:
        topic = d.get("Topic") or d.get("Image Topic")
        if topic is None:
            continue
        if d.get("Transport Hint") == "compressed":
            topic += "/compressed"       # image_transport's compressed plugin subscribes <base>/compressed
        shown.append(topic)
        assert topic in published or topic in INPUTS, f"{d['Name']}: {topic} is not a topic of the stack"
    assert "/hdas/lidar_chassis_left" in shown and "/odom" in shown
    assert config["Visualization Manager"]["Global Options"]["Fixed Frame"] == "odom"
