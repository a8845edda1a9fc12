"""What the vectors draw (contract section 3.3): structured patterns first, then random."""
