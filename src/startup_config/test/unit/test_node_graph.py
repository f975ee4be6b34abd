"""r1_startup.node_graph: edges from the master's state, and the picture is written."""
from r1_startup.node_graph import USER, draw, edges_from_state


def test_edges_join_publishers_to_subscribers_with_their_topics():
    pubs = [("/hdas/feedback_torso", ["/HDAS"]), ("/motion_control/control_torso", ["/torso_speed_control"]),
            ("/rosout", ["/HDAS", "/torso_speed_control"]), ("/motion_target/target_speed_torso", ["/rostopic_1"])]
    subs = [("/hdas/feedback_torso", ["/torso_speed_control", "/r1_eepose_pub_node"]),
            ("/motion_control/control_torso", ["/HDAS"]), ("/rosout", ["/rosout"]),
            ("/motion_target/target_speed_torso", ["/torso_speed_control"])]
    edges = edges_from_state(pubs, subs, ignore={"/rostopic_1"})
    assert edges[("/HDAS", "/torso_speed_control")] == ["/hdas/feedback_torso"]
    assert edges[("/HDAS", "/r1_eepose_pub_node")] == ["/hdas/feedback_torso"]
    assert edges[("/torso_speed_control", "/HDAS")] == ["/motion_control/control_torso"]
    assert edges[(USER, "/torso_speed_control")] == ["/motion_target/target_speed_torso"]   # an input
    assert not any("/rosout" in t for ts in edges.values() for t in ts)
    assert not any("/rostopic_1" in e for e in edges)


def test_draw_writes_a_png(tmp_path):
    out = tmp_path / "graph.png"
    draw({("/HDAS", "/torso_speed_control"): ["/hdas/feedback_torso"],
          ("/some_new_node", "/HDAS"): ["/motion_control/control_arm_left"]}, str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
