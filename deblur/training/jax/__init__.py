"""Training under Keras' JAX backend (`KERAS_BACKEND=jax`): no TensorFlow, for GPU machines that lack it."""
