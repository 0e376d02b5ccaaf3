"""Video: clips in and out through the same deblurring as photos, and real-blur training pairs from slow motion.

clips.py (what a clip is: its video stream checked, frames decoded as HWC RGB float32 in [0, 1]), encode.py
(segments encoded and joined, audio and subtitles carried over), predict.py (`deblur predict` on a clip, in
resumable segments), pairs.py (`deblur data from-video`: GOPRO's recipe on a high-frame-rate clip).
"""
