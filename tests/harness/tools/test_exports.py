import harness.tools as package


def test_all_is_sorted_and_complete() -> None:
    assert package.__all__ == sorted(package.__all__)
    for name in package.__all__:
        assert hasattr(package, name), name
