"""The way out of Python: a trained deblurrer as a TensorFlow SavedModel (TF Serving), a LiteRT flat buffer
(phones, small devices) or an ONNX model (ONNX Runtime, C++, Java, C#). One adapter a format, each taking a Keras
model and a path and returning what it wrote; `exporter.export_model` checks the request and picks one."""
