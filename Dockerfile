# deblur on the official TensorFlow GPU image of the version it pins (CPU only: tensorflow/tensorflow:2.21.0).
# Installs the package the same way as the README: pip install . (TensorFlow is already in the image).
FROM tensorflow/tensorflow:2.21.0-gpu

WORKDIR /opt/deblur
COPY pyproject.toml README.md ./
COPY deblur ./deblur
COPY configs ./configs
RUN pip install --no-cache-dir . && useradd --create-home --uid 1000 deblur

# Runs, demo data and outputs go to the mounted /work; nothing is written inside the image.
USER 1000
ENV DEBLUR_HOME=/work/.deblur-cache
WORKDIR /work
# deblur serve's port: docker run -p 8000:8000 deblur serve --host 0.0.0.0
EXPOSE 8000
ENTRYPOINT ["deblur"]
CMD ["--help"]
