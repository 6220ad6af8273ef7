"""Text: sentence splitting, sentence units and passage versions, the answer sentence, the MEQ tools."""
