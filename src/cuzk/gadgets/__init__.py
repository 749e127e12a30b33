"""gadgets"""
