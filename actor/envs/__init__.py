"""Small Gymnasium environments shipped with saclstm; importing this package registers them."""

from actor.envs import memory  # noqa: F401 - registers the memory tasks' ids
