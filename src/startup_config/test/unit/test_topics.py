"""r1_startup.topics: the stack's topic list and the check of what the master and the streams show."""
from pathlib import Path

import pytest

from r1_startup.topics import TopicSpec, load_topics, problems

TOPICS = Path(__file__).resolve().parents[2] / "config" / "r1_topics.yaml"


def test_the_list_holds_every_guide_topic_once_with_a_type():
    specs = load_topics(TOPICS)
    names = [s.name for s in specs]
    assert len(names) == len(set(names))
    for required in ("/hdas/feedback_arm_left", "/hdas/feedback_chassis", "/hdas/imu_torso", "/hdas/bms",
                     "/controller", "/motion_control/control_torso", "/motion_control/pose_ee_arm_right",
                     "/hdas/camera_head/depth/depth_registered", "/hdas/lidar_chassis_left", "/diagnostics"):
        assert required in names
    types = {s.name: s.type for s in specs}
    assert types["/hdas/camera_wrist_left/aligned_depth_to_color/image_raw"] == "sensor_msgs/Image"
    assert types["/hdas/feedback_status_torso"] == "hdas_msg/feedback_status"


def test_sensors_can_be_left_out():
    all_specs, without = load_topics(TOPICS), load_topics(TOPICS, sensors=False)
    assert len(without) == len(all_specs) - 12
    assert not any(s.sensor for s in without)


def test_bad_files_are_refused(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("g:\n  relative/name: {type: std_msgs/Bool, kind: stream}\n")
    with pytest.raises(ValueError, match="absolute"):
        load_topics(bad)
    bad.write_text("g:\n  /x: {type: std_msgs/Bool, kind: sometimes}\n")
    with pytest.raises(ValueError, match="kind"):
        load_topics(bad)


def test_problems_name_what_is_missing_or_wrong():
    specs = [TopicSpec("/a", "std_msgs/Bool", "stream", "g"), TopicSpec("/b", "std_msgs/Int32", "stream", "g"),
             TopicSpec("/c", "std_msgs/Bool", "registered", "g"), TopicSpec("/d", "std_msgs/Bool", "stream", "g"),
             TopicSpec("/e", "std_msgs/Bool", "stream", "g")]
    published = {"/a": "std_msgs/Bool", "/b": "std_msgs/Bool", "/c": "std_msgs/Bool", "/d": "std_msgs/Bool"}
    received = {"/a": (3, "std_msgs/Bool")}
    found = problems(specs, published, received)
    assert found == ["/b: published as std_msgs/Bool, expected std_msgs/Int32",
                     "/d: advertised, no message yet",
                     "/e: nobody publishes it (expected std_msgs/Bool)"]
    received["/d"] = (1, "std_msgs/Bool")
    published["/b"] = "std_msgs/Int32"
    received["/b"] = (1, "std_msgs/Int32")
    published["/e"] = "std_msgs/Bool"
    received["/e"] = (2, "std_msgs/Bool")
    assert problems(specs, published, received) == []
