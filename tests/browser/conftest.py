import sys
from pathlib import Path

# synthetic.py (the synthetic run builder) is shared by the browser test and the unit tests.
sys.path.insert(0, str(Path(__file__).parent))
