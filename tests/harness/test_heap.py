"""FrozenHeap: a collection inside a test walks only that test's objects, and no garbage is frozen."""
import gc
import weakref

import pytest

from ortcheck.pytest_plugin.heap import FrozenHeap


class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the cyclic collector frees it


@pytest.fixture
def thawed():
    """A heap nothing froze yet (this process's own FrozenHeap froze it before the test)."""
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_survivors_are_frozen_and_garbage_is_collected_first(thawed):
    heap = FrozenHeap(thaw_every=1000)
    kept, dropped = Node(), Node()
    dropped_ref = weakref.ref(dropped)
    del dropped
    heap.pytest_runtest_setup(None)
    assert dropped_ref() is None  # collected before the freeze, not kept forever
    assert gc.get_freeze_count() > 0
    assert not any(obj is kept for obj in gc.get_objects())  # frozen: a collection no longer walks it
    assert kept.me is kept


def test_the_heap_thaws_every_n_tests_so_cycles_freed_while_frozen_are_collected(thawed):
    heap = FrozenHeap(thaw_every=2)
    heap.pytest_runtest_setup(None)  # test 1 thaws (none frozen yet) and freezes
    node = Node()
    heap.pytest_runtest_setup(None)  # test 2: node is frozen
    ref = weakref.ref(node)
    del node
    gc.collect()
    assert ref() is not None  # cyclic garbage among frozen objects waits for the thaw
    heap.pytest_runtest_setup(None)  # test 3 thaws first
    assert ref() is None


def test_a_process_its_parent_froze_is_never_thawed(thawed):
    """The parent's heap stays frozen: a thaw would make the next collection walk and copy its pages."""
    from_the_parent = Node()
    gc.freeze()
    heap = FrozenHeap(thaw_every=1)
    for _ in range(3):
        heap.pytest_runtest_setup(None)
    heap.pytest_unconfigure(None)
    assert gc.get_freeze_count() > 0 and not any(obj is from_the_parent for obj in gc.get_objects())
