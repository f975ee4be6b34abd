"""HDAS/launch/r1_sensors.launch (the robot's sensor drivers) loaded by roslaunch's own XML loader.

The driver packages are not installed here, so each is a stub package carrying the public launch
file's arguments (a wrong or unknown argument fails the include, as on the robot) and a node; the
test reads what roslaunch would start: which nodes, in which namespace, with which remaps and
params, and checks that they put every output on the guide's topic, and that docs/sensors.md
documents the same remaps. No driver runs.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import roslaunch.config
import roslaunch.xmlloader
import rospkg

SRC = Path(__file__).resolve().parents[3]
LAUNCH = SRC / "HDAS" / "launch" / "r1_sensors.launch"
DOCS = SRC.parent / "docs" / "sensors.md"

# The public launch files' arguments (zed-ros-wrapper zed2.launch, realsense-ros
# rs_multiple_devices.launch, livox_ros_driver2 launch_ROS1/msg_MID360.launch) and their nodes.
STUBS = {
    "zed_wrapper": ("launch/zed2.launch", """<launch>
  <arg name="svo_file" default=""/><arg name="stream" default=""/>
  <arg name="node_name" default="zed_node"/><arg name="camera_model" default="zed2"/>
  <arg name="publish_urdf" default="true"/><arg name="camera_name" default="zed2"/>
  <arg name="base_frame" default="base_link"/>
  <arg name="cam_pos_x" default="0.0"/><arg name="cam_pos_y" default="0.0"/><arg name="cam_pos_z" default="0.0"/>
  <arg name="cam_roll" default="0.0"/><arg name="cam_pitch" default="0.0"/><arg name="cam_yaw" default="0.0"/>
  <group ns="$(arg camera_name)">
    <node pkg="zed_wrapper" type="zed_wrapper_node" name="$(arg node_name)">
      <param name="general/camera_model" value="$(arg camera_model)"/>
      <param name="pos_tracking/base_frame" value="$(arg base_frame)"/>
    </node>
  </group>
</launch>"""),
    "realsense2_camera": ("launch/rs_multiple_devices.launch", """<launch>
  <arg name="serial_no_camera1" default=""/><arg name="serial_no_camera2" default=""/>
  <arg name="serial_no_camera3" default=""/>
  <arg name="camera1" default="camera1"/><arg name="camera2" default="camera2"/><arg name="camera3" default="camera3"/>
  <arg name="tf_prefix_camera1" default="$(arg camera1)"/><arg name="tf_prefix_camera2" default="$(arg camera2)"/>
  <arg name="tf_prefix_camera3" default="$(arg camera3)"/>
  <arg name="initial_reset" default="false"/><arg name="reconnect_timeout" default="6"/>
  <group ns="$(arg camera1)">
    <node pkg="nodelet" type="nodelet" name="realsense2_camera"
          args="load realsense2_camera/RealSenseNodeFactory manager">
      <param name="serial_no" value="$(arg serial_no_camera1)"/>
    </node>
  </group>
  <group ns="$(arg camera2)">
    <node pkg="nodelet" type="nodelet" name="realsense2_camera"
          args="load realsense2_camera/RealSenseNodeFactory manager">
      <param name="serial_no" value="$(arg serial_no_camera2)"/>
    </node>
  </group>
</launch>"""),
    "livox_ros_driver2": ("launch_ROS1/msg_MID360.launch", """<launch>
  <arg name="lvx_file_path" default="livox_test.lvx"/><arg name="bd_list" default="100000000000000"/>
  <arg name="xfer_format" default="1"/><arg name="multi_topic" default="0"/><arg name="data_src" default="0"/>
  <arg name="publish_freq" default="10.0"/><arg name="output_type" default="0"/>
  <arg name="rviz_enable" default="false"/><arg name="rosbag_enable" default="false"/>
  <arg name="cmdline_arg" default="$(arg bd_list)"/><arg name="msg_frame_id" default="livox_frame"/>
  <arg name="lidar_bag" default="true"/><arg name="imu_bag" default="true"/>
  <node name="livox_lidar_publisher2" pkg="livox_ros_driver2" type="livox_ros_driver2_node" args="$(arg cmdline_arg)">
    <param name="xfer_format" value="$(arg xfer_format)"/>
    <param name="multi_topic" value="$(arg multi_topic)"/>
    <param name="publish_freq" type="double" value="$(arg publish_freq)"/>
    <param name="frame_id" type="string" value="$(arg msg_frame_id)"/>
  </node>
</launch>"""),
    "signal_camera": ("launch/signal_camera.launch", """<launch>
  <node pkg="signal_camera" type="signal_camera_node" name="signal_camera_node" required="true"/>
</launch>"""),
}


@pytest.fixture()
def drivers(tmp_path, monkeypatch):
    """Stub driver packages on ROS_PACKAGE_PATH (with the real r1 packages)."""
    for pkg, (rel, text) in STUBS.items():
        d = tmp_path / pkg
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
        (d / "package.xml").write_text(f'<?xml version="1.0"?><package format="2">'
                                       f'<name>{pkg}</name><version>0.0.0</version>'
                                       f'<description>stub</description><maintainer email="a@b.c">x</maintainer>'
                                       f'<license>x</license></package>')
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"{tmp_path}:{SRC}")
    # roslaunch keeps a RosPack per process, made on first use with the ROS_PACKAGE_PATH of then
    # (another test may have loaded a launch file before): one that sees the stubs
    import roslaunch.node_args
    import roslaunch.substitution_args
    monkeypatch.setattr(roslaunch.substitution_args, "_rospack", None)
    monkeypatch.setattr(roslaunch.node_args, "_rospack", None)
    return tmp_path


def load(*args: str) -> roslaunch.config.ROSLaunchConfig:
    config = roslaunch.config.ROSLaunchConfig()
    loader = roslaunch.xmlloader.XmlLoader()
    loader.load(str(LAUNCH), config, argv=list(args), verbose=False)
    return config


def nodes_by_type(config) -> dict:
    return {(n.package, n.type): n for n in config.nodes}


def test_every_driver_lands_on_the_guides_topics(drivers):
    config = load()
    assert not config.config_errors
    nodes = {(n.namespace + n.name): n for n in config.nodes}
    # ZED: /<camera_name>/<node_name>/...
    zed = nodes["/hdas/camera_head"]
    base = zed.namespace + zed.name
    assert base + "/left_raw/image_raw_color/compressed" == "/hdas/camera_head/left_raw/image_raw_color/compressed"
    assert base + "/depth/depth_registered" == "/hdas/camera_head/depth/depth_registered"
    # RealSense: one nodelet per wrist, the namespace is the topic prefix
    for side in ("left", "right"):
        n = nodes[f"/hdas/camera_wrist_{side}/realsense2_camera"]
        assert n.namespace + "color/image_raw/compressed" == f"/hdas/camera_wrist_{side}/color/image_raw/compressed"
        assert (n.namespace + "aligned_depth_to_color/image_raw"
                == f"/hdas/camera_wrist_{side}/aligned_depth_to_color/image_raw")
    # Livox: /livox/lidar remapped, PointCloud2 (xfer_format 0) in the URDF's frame, 10 Hz
    livox = nodes["/livox_lidar_publisher2"]
    assert [tuple(r) for r in livox.remap_args] == [("/livox/lidar", "/hdas/lidar_chassis_left")]
    params = {p.key: p.value for p in config.params.values()}
    assert params["/livox_lidar_publisher2/xfer_format"] == 0
    assert params["/livox_lidar_publisher2/frame_id"] == "lidar_chassis_left_link"
    assert params["/livox_lidar_publisher2/publish_freq"] == 10.0
    assert "/signal_camera_node" in nodes
    # remaps stay with the driver they are for
    for key, n in nodes.items():
        if key != "/livox_lidar_publisher2":
            assert n.remap_args == [], key


def test_serial_numbers_and_frame_are_passed(drivers):
    config = load("serial_no_wrist_left:=111", "serial_no_wrist_right:=222", "lidar_frame:=livox_frame")
    params = {p.key: p.value for p in config.params.values()}
    assert params["/hdas/camera_wrist_left/realsense2_camera/serial_no"] == 111
    assert params["/hdas/camera_wrist_right/realsense2_camera/serial_no"] == 222
    assert params["/livox_lidar_publisher2/frame_id"] == "livox_frame"


@pytest.mark.parametrize("switch, node", [("zed", "/hdas/camera_head"),
                                          ("realsense", "/hdas/camera_wrist_left/realsense2_camera"),
                                          ("livox", "/livox_lidar_publisher2"),
                                          ("signal_camera", "/signal_camera_node")])
def test_each_driver_can_be_switched_off(drivers, switch, node):
    names = {n.namespace + n.name for n in load(f"{switch}:=false").nodes}
    assert node not in names and len(names) >= 3


def test_all_off_needs_no_driver_package(monkeypatch):
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(SRC))
    with pytest.raises(rospkg.ResourceNotFound):
        rospkg.RosPack().get_path("zed_wrapper")
    config = load("zed:=false", "realsense:=false", "livox:=false", "signal_camera:=false")
    assert config.nodes == []


def test_docs_state_the_same_remaps(drivers):
    text = DOCS.read_text()
    for n in load().nodes:
        for src, dst in n.remap_args:
            assert f"`{src}` → `{dst}`" in text, f"docs/sensors.md does not document the remap {src} -> {dst}"
    for topic in ("/hdas/camera_head/left_raw/image_raw_color/compressed", "/hdas/lidar_chassis_left",
                  "/hdas/camera_head/depth/depth_registered"):
        assert topic in text
