"""Classifies 8x8 digit images: ImageSubmitted in (SQS), ImageClassified out (EventBridge)."""
